/** @mgw/client: the messaging gateway's v2 API with safe retries. See README.md. */
export { GatewayClient, newIdempotencyKey, type GatewayClientOptions, type CallOptions, type WaitOptions, type FinishedJob } from './client.js';
export {
  GatewayError,
  isGatewayError,
  isGatewayErrorCode,
  GATEWAY_ERROR_CODES,
  type GatewayErrorCode,
  type ClientErrorCode,
  type ErrorCode,
  type ErrorData,
  type ErrorDataByCode,
} from './errors.js';
export { decideRetry, backoffMs, RETRY_DEFAULTS, type RetryClass, type RetryOptions, type AttemptOutcome, type RetryDecision } from './retry.js';
export type { RetryInfo } from './http.js';
export { verifyWebhook, parseWebhook, WebhookVerificationError, WEBHOOK_TOLERANCE_MS, type VerifyWebhookInput, type WebhookVerification, type WebhookRejection, type WebhookEvent, type WebhookHeaders } from './webhooks.js';
export * from './types.js';
