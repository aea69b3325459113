/**
 * The Settings panel of one instance: its settings edited as JSON and saved with PATCH
 * /admin/v1/instances/:id; the server checks them and its validation messages are shown as they are.
 */
import { call, message, refusal } from './api.js';
import { byId, onSubmit, showPanel, type InputEl, type PanelTarget } from './dom.js';

/** What the panel reads of an instance (the list's item, or the PATCH's answer). */
interface WithSettings {
  settings?: Record<string, unknown>;
}

let settingsId: string | null = null;

export const settingsTarget = (): string | null => settingsId;

export function openSettings(item: PanelTarget & WithSettings): void {
  settingsId = item.id;
  showPanel('settings', item.name);
  byId<InputEl>('settings-json').value = JSON.stringify(item.settings ?? {}, null, 2);
  byId('settings-error').textContent = '';
  byId('settings-saved').textContent = '';
}

export function closeSettings(): void {
  settingsId = null;
  byId('settings').hidden = true;
}

async function saveSettings(): Promise<void> {
  const id = settingsId;
  if (id === null) return;
  const error = byId('settings-error');
  const saved = byId('settings-saved');
  error.textContent = '';
  saved.textContent = '';
  let settings: unknown;
  try {
    settings = JSON.parse(byId<InputEl>('settings-json').value);
  } catch (err) {
    error.textContent = `Not JSON: ${message(err)}`;
    return;
  }
  try {
    const updated = await call<WithSettings>('PATCH', `/admin/v1/instances/${encodeURIComponent(id)}`, { settings });
    if (settingsId !== id) return;
    byId<InputEl>('settings-json').value = JSON.stringify(updated.settings ?? {}, null, 2);
    saved.textContent = 'Saved.';
  } catch (err) {
    if (settingsId === id) error.textContent = refusal(err);
  }
}

export function initSettings(): void {
  byId('settings-close').addEventListener('click', closeSettings);
  onSubmit('settings-form', saveSettings);
}
