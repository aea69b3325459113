/**
 * Send one message and wait for its outcome, the way the gateway wants to be used: an idempotency key on the
 * send (made by the client), retries only where they are safe, then polling the job instead of resending.
 *
 *   MGW_API_KEY=wapi_demo_… node --import tsx examples/send-and-wait.ts 4915112345678 "hello"
 *
 * MGW_URL defaults to http://127.0.0.1:3000 (`npm start`). Exit code 0 when the message was sent, 1 when it
 * failed or ended otherwise, 2 for a usage error.
 */
import { GatewayClient, isGatewayError } from '../src/index.js';

const [phone = '4915112345678', message = 'Hello from @mgw/client'] = process.argv.slice(2);
const apiKey = process.env.MGW_API_KEY;
if (!apiKey) {
  console.error('set MGW_API_KEY to the instance API key (npm start prints the demo key once)');
  process.exit(2);
}

const client = new GatewayClient({
  baseUrl: process.env.MGW_URL ?? 'http://127.0.0.1:3000',
  apiKey,
  onRetry: (r) => console.log(`retrying ${r.method} ${r.path} after ${r.code} in ${r.delayMs} ms (same key ${r.idempotencyKey ?? '-'})`),
});

try {
  const accepted = await client.sendMessage({ phone, message });
  console.log(`accepted: job ${accepted.jobId}, key ${accepted.idempotencyKey}, planned for ${accepted.scheduledAt} (in ${accepted.etaSeconds} s)`);
  const job = await client.waitForOutcome(accepted.jobId, { timeoutMs: 5 * 60_000, pollMs: 1_000 });
  console.log(`outcome: ${job.state}${job.state === 'sent' ? ` (${job.deliveryConfidence}, ${job.messageId})` : ` (${job.resultCode ?? job.unknownReason ?? ''})`}`);
  if (job.state === 'unknown') console.log('the gateway cannot tell whether it went out: a person checks the chat; do not resend blindly');
  process.exitCode = job.state === 'sent' ? 0 : 1;
} catch (err) {
  if (!isGatewayError(err)) throw err;
  if (err.is('NO_RESPONSE') && err.idempotencyKey) {
    console.error(`no answer after ${err.attempts} attempts; look the job up later with jobByKey('${err.idempotencyKey}') instead of resending`);
  } else if (err.is('OUTCOME_TIMEOUT')) {
    console.error(`still ${err.data.state}; the job goes on, poll ${err.data.jobId} later`);
  } else if (err.is('INSTANCE_OFFLINE')) {
    console.error(`the instance is ${err.data.instance.status}; wait until it is connected`);
  } else {
    console.error(`${err.status} ${err.code}: ${err.message}`);
  }
  process.exitCode = 1;
}
