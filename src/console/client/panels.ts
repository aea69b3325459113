/** The panels that show one instance (link, settings, queue, webhook, diagrams), closed together. */
import { closeLink, linkTarget } from './link.js';
import { closeSettings, settingsTarget } from './settings.js';
import { closeQueue, queueTarget } from './queue.js';
import { closeWebhook, webhookTarget } from './webhook.js';
import { closeDiagrams, diagramsTarget } from './diagrams.js';

/** Close the panels of an instance (null: of any), e.g. when it is deleted or the operator signs out. */
export function closePanelsOf(id: string | null): void {
  if (id === null || linkTarget() === id) closeLink();
  if (id === null || settingsTarget() === id) closeSettings();
  if (id === null || queueTarget() === id) closeQueue();
  if (id === null || webhookTarget() === id) closeWebhook();
  if (id === null || diagramsTarget() === id) closeDiagrams();
}
