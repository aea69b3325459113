/** Webhooks: event catalogue, signatures, outbox, configuration, delivery log, sender, admin routes. */
export * from './events.js';
export * from './sign.js';
export * from './config.js';
export * from './outbox.js';
export * from './deliveries.js';
export * from './pending.js';
export * from './transport.js';
export * from './deliver.js';
export * from './routes.js';
export * from './driver-events.js';
