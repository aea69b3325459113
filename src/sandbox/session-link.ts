/**
 * What a waiting sandbox session shows the phone: a QR of a fresh token that rotates every `qrRotateMs`, until a
 * pairing code is asked for instead. Its `qr` event carries the token, the text a QR encodes, as
 * whatsapp-web.js's carries the page's; the PNG is drawn only for whoever looks at it (`current()`,
 * src/qr-image.ts). The session says when it starts waiting (`show`) and when the wait is over (`clear`: linked,
 * stopped, crashed, disconnected); a rotation due from an earlier wait does nothing.
 */
import type { SandboxEvent } from '../drivers/sandbox/api.js';
import type { SessionNetwork } from './books.js';
import { newPairingCode, newQrToken } from './ids.js';
import { qrImage } from '../qr-image.js';

export interface ShownQr {
  token: string;
  dataUrl: string;
  expiresAt: number;
}

export class LinkScreen {
  private qr: { token: string; expiresAt: number } | null = null;
  private pairing: { code: string; phone: string } | null = null;
  /** bumps with every show and clear, so that the rotation of an earlier wait stops */
  private wait = 0;

  constructor(
    private readonly net: Pick<SessionNetwork, 'now' | 'schedule' | 'qrRotateMs'>,
    private readonly emit: (event: SandboxEvent) => void,
  ) {}

  /**
   * Start showing QRs (emitted as `qr` events). The first one comes a turn after the session started, as a
   * page shows its QR once it loaded: whoever started the session hears it initializing first.
   */
  show(): void {
    this.clear();
    const wait = this.wait;
    setImmediate(() => this.rotate(wait));
  }

  /** Show nothing any more. */
  clear(): void {
    this.wait++;
    this.qr = null;
    this.pairing = null;
  }

  /** The phone will link with a code instead of a scan: the QR goes away, the code is emitted (`code`). */
  requestCode(phone: string): string {
    this.pairing = { code: newPairingCode(), phone };
    this.qr = null;
    this.emit({ name: 'code', args: [this.pairing.code] });
    return this.pairing.code;
  }

  /** The QR shown right now, drawn. */
  current(): ShownQr | null {
    return this.qr ? { ...this.qr, dataUrl: qrImage(this.qr.token) } : null;
  }

  matches(token: string): boolean {
    return this.qr !== null && this.qr.token === token;
  }

  /** The phone that asked for this pairing code (dashes and case ignored), or null. */
  pairingPhone(code: string): string | null {
    if (!this.pairing) return null;
    return this.pairing.code === code.replace(/-/g, '').toUpperCase() ? this.pairing.phone : null;
  }

  private rotate(wait: number): void {
    if (wait !== this.wait || this.pairing) return;
    const token = newQrToken();
    this.qr = { token, expiresAt: this.net.now() + this.net.qrRotateMs };
    this.net.schedule(this.net.qrRotateMs, () => this.rotate(wait));
    this.emit({ name: 'qr', args: [token] });
  }
}
