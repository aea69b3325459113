/** The confirmation dialog (#confirm): a question, answered OK or Cancel; a destructive action waits for it. */
import { byId, type DialogEl } from './dom.js';

let answer: ((ok: boolean) => void) | null = null;

/** Show the question; resolves true when the operator confirms. */
export function confirmAction(text: string): Promise<boolean> {
  const dialog = byId<DialogEl>('confirm');
  byId('confirm-text').textContent = text;
  dialog.returnValue = '';
  dialog.showModal();
  return new Promise((resolve) => {
    answer = resolve;
  });
}

export function initConfirm(): void {
  byId('confirm').addEventListener('close', () => {
    const resolve = answer;
    answer = null;
    resolve?.(byId<DialogEl>('confirm').returnValue === 'ok');
  });
}
