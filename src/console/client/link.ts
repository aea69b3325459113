/**
 * The Link panel of one instance: the QR as an image, read every 2 s (GET /admin/v1/instances/:id/qr) until the
 * instance is linked, or a pairing code for a phone number (POST .../pairing-code).
 */
import { call, message } from './api.js';
import { byId, onSubmit, refresher, showPanel, type ImgEl, type InputEl } from './dom.js';

let linkId: string | null = null;
const polling = refresher(() => refreshQr());
let shownQr = '';

export const linkTarget = (): string | null => linkId;

export function openLink(id: string, name: string): void {
  closeLink();
  linkId = id;
  showPanel('link', name);
  byId('pair-code').textContent = '';
  byId('link-status').textContent = 'Reading the QR…';
  polling.start();
}

export function closeLink(): void {
  polling.stop();
  linkId = null;
  shownQr = '';
  const qr = byId<ImgEl>('qr');
  qr.hidden = true;
  qr.src = '';
  byId('link').hidden = true;
}

/** The list says the instance being linked is now connected: stop showing its QR. */
export function linkFromList(item: { connected?: boolean; phoneNumber?: string | null }): void {
  if (!item.connected) return;
  polling.stop();
  byId<ImgEl>('qr').hidden = true;
  byId('link-status').textContent = `Linked${item.phoneNumber ? ` as +${item.phoneNumber}` : ''}.`;
}

async function refreshQr(): Promise<void> {
  const id = linkId;
  if (id === null) return;
  try {
    const { status, qr } = await call<{ status: string; qr: string | null }>('GET', `/admin/v1/instances/${encodeURIComponent(id)}/qr`);
    if (linkId !== id || !polling.running()) return;
    const img = byId<ImgEl>('qr');
    if (qr) {
      if (qr !== shownQr) img.src = shownQr = qr;
      img.hidden = false;
      byId('link-status').textContent = 'Scan this QR with the phone (Linked devices → Link a device). It refreshes by itself.';
    } else {
      img.hidden = true;
      byId('link-status').textContent = status === 'connected' ? 'Linked.' : `No QR right now (status ${status}); waiting…`;
    }
  } catch (err) {
    if (linkId === id) byId('link-status').textContent = `The QR could not be read: ${message(err)}`;
  }
}

async function requestCode(): Promise<void> {
  const id = linkId;
  const phone = byId<InputEl>('pair-phone').value.replace(/[^\d]/g, '');
  if (id === null) return;
  const out = byId('pair-code');
  out.textContent = 'Requesting a code (this can take up to a minute)…';
  try {
    const { code } = await call<{ code: string }>('POST', `/admin/v1/instances/${encodeURIComponent(id)}/pairing-code`, { phoneNumber: phone });
    if (linkId === id) out.textContent = `Enter this code on the phone: ${code}`;
  } catch (err) {
    if (linkId === id) out.textContent = `No code: ${message(err)}`;
  }
}

export function initLink(): void {
  byId('link-close').addEventListener('click', closeLink);
  onSubmit('pair-form', requestCode);
}
