/**
 * What the sandbox control API reads from the network, as plain functions over a SandboxNetwork: the HTTP routes
 * (src/http/routes/sandbox-control.ts) only parse, call these or the network, and answer.
 */
import { DomainError } from '../errors.js';
import type { SandboxNetwork } from './network.js';
import type { GroupRecord } from './types.js';
import { wireMessage } from './wire.js';

export function groupView(g: GroupRecord) {
  return {
    groupId: g.gid,
    subject: g.subject,
    description: g.description,
    owner: `${g.owner}@c.us`,
    inviteCode: g.inviteCode,
    participants: g.participants.map((p) => ({ id: `${p.phone}@c.us`, isAdmin: p.admin, isSuperAdmin: p.superAdmin })),
  };
}

/** The group, or 404 CHAT_NOT_FOUND. */
export function requireGroup(net: SandboxNetwork, groupId: string): GroupRecord {
  const g = net.groups.get(groupId);
  if (!g) throw new DomainError('CHAT_NOT_FOUND', 'no such group');
  return g;
}

/** The last `limit` messages of a chat as one account sees it (the recipient's side), with media hashes. */
export function chatAsSeenBy(net: SandboxNetwork, phone: string, chatId: string, limit: number) {
  return net.messages.inChat(phone, chatId).slice(-limit).map((m) => ({
    ...wireMessage(m, phone),
    mediaSha256: m.media?.sha256 ?? null,
    reactions: Object.fromEntries(Object.entries(m.reactions).map(([who, r]) => [`${who}@c.us`, r.emoji])),
    edits: m.edits.map((e) => e.body),
  }));
}
