/** TEMPORARY re-export: the wire shapes moved to src/wire/objects.ts; import them from there (src/actors/network-events.ts still imports this path). */
export { toChat, toContact, toMessage, secondsToMs, type Chat, type Contact, type Message } from '../../wire/objects.js';
