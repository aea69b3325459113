/** Webhooks: event catalogue, signatures, outbox, configuration, delivery log, sender (the admin routes: src/http/routes/webhooks.ts). */
export * from './events.js';
export * from './sign.js';
export * from './config.js';
export * from './outbox.js';
export * from './deliveries.js';
export * from './pending.js';
export * from './transport.js';
export * from './deliver.js';
export * from './driver-events.js';
