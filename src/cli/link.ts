/**
 * `mgw qr <id>` and `mgw pair <id> <phone>`: linking an instance from a terminal. The QR and the pairing code
 * are login secrets: printed to the operator's terminal only (stdout), never to a file or a log.
 */
import QRCode from 'qrcode';
import { isRecord } from './api.js';

/** GET /admin/v1/instances/:id/qr's `data`. */
export interface QrAnswer {
  status: string;
  qr: string | null;
  raw: string | null;
}

/** POST /admin/v1/instances/:id/pairing-code's `data`. */
export interface PairAnswer {
  instanceId: string;
  code: string;
  at: string;
}

const textOrNull = (v: unknown): v is string | null => v === null || typeof v === 'string';

/** The `data` of a successful envelope of the expected shape, or null (the caller prints the envelope). */
export function qrAnswer(envelope: unknown): QrAnswer | null {
  const data = isRecord(envelope) && envelope.success === true ? envelope.data : null;
  if (!isRecord(data) || typeof data.status !== 'string' || !textOrNull(data.qr) || !textOrNull(data.raw)) return null;
  return { status: data.status, qr: data.qr, raw: data.raw };
}

export function pairAnswer(envelope: unknown): PairAnswer | null {
  const data = isRecord(envelope) && envelope.success === true ? envelope.data : null;
  if (!isRecord(data) || typeof data.instanceId !== 'string' || typeof data.code !== 'string' || typeof data.at !== 'string') return null;
  return { instanceId: data.instanceId, code: data.code, at: data.at };
}

/** A pairing code as the phone shows its input: two groups of four (`ABCD-EFGH`). */
export const formatCode = (code: string): string => (/^[A-Z0-9]{8}$/i.test(code) ? `${code.slice(0, 4)}-${code.slice(4)}` : code);

/**
 * What `mgw qr` prints: the QR drawn with block characters to scan from the terminal (the sandbox's as well as
 * whatsapp-web.js's: both give the QR's text).
 */
export async function qrText(id: string, a: QrAnswer): Promise<string> {
  if (a.raw === null) return `instance ${id} is ${a.status}: no QR to scan${a.status === 'waiting_qr' ? ' (none shown yet, or a pairing code was asked for instead)' : ''}\n`;
  // a terminal gets the small drawing (its colours are ANSI codes); a file or a pipe gets plain block characters
  const drawing = process.stdout.isTTY ? await QRCode.toString(a.raw, { type: 'terminal', small: true }) : await QRCode.toString(a.raw, { type: 'utf8' });
  return `${drawing}\nscan with WhatsApp on the phone: Settings → Linked devices → Link a device (instance ${id})\n`;
}

export function pairText(a: PairAnswer): string {
  return `pairing code for instance ${a.instanceId}: ${formatCode(a.code)}\n` +
    'on the phone: WhatsApp → Settings → Linked devices → Link a device → Link with phone number instead\n';
}
