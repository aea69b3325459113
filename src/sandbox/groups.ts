/**
 * Groups on the sandbox network: creation, participants, admins, invite codes, leaving, subject and
 * description, each change announced to the members' sessions as whatsapp-web.js group notifications.
 * Admin-only operations refuse non-admins the way the network does (the request is provably not applied).
 */
import { DriverError, type CreateGroupResult, type DriverEventName, type WireGroupNotification } from '../drivers/contract.js';
import type { ParticipantResults } from '../drivers/sandbox/api.js';
import { newGroupId, newInviteCode, newPhoneKey, serializeId, userId } from './ids.js';
import type { GroupNetwork } from './books.js';
import { dict, type GroupRecord } from './types.js';
import { characterCount } from '../characters.js';

type GroupEvent = Extract<DriverEventName, 'group_join' | 'group_leave' | 'group_admin_changed' | 'group_update'>;

export class GroupBook {
  constructor(private readonly net: GroupNetwork) {}

  get(gid: string): GroupRecord | null {
    return this.net.state.groups[gid] ?? null;
  }

  require(gid: string): GroupRecord {
    const g = this.get(gid);
    if (!g) throw new DriverError('group not found', 'NOT_FOUND', true);
    return g;
  }

  /** Groups `phone` is in, or was in (their chat stays, read-only). */
  of(phone: string): GroupRecord[] {
    return Object.values(this.net.state.groups).filter(
      (g) => g.participants.some((p) => p.phone === phone) || g.former.includes(phone),
    );
  }

  isMember(g: GroupRecord, phone: string): boolean {
    return g.participants.some((p) => p.phone === phone);
  }

  requireMember(g: GroupRecord, phone: string): void {
    if (!this.isMember(g, phone)) throw new DriverError('not a participant of this group', 'INVALID_INPUT', true);
  }

  requireAdmin(g: GroupRecord, phone: string): void {
    this.requireMember(g, phone);
    if (!g.participants.some((p) => p.phone === phone && p.admin)) {
      throw new DriverError('only group admins can do this', 'INVALID_INPUT', true);
    }
  }

  create(creator: string, title: string, ids: string[]): CreateGroupResult {
    if (!title.trim() || characterCount(title) > 100) throw new DriverError('group title must be 1 to 100 characters', 'INVALID_INPUT', true);
    const g: GroupRecord = {
      gid: newGroupId(),
      subject: title,
      description: null,
      owner: creator,
      createdAtMs: this.net.now(),
      participants: [{ phone: creator, admin: true, superAdmin: true }],
      inviteCode: newInviteCode(),
      former: [],
    };
    this.net.state.groups[g.gid] = g;
    const missing: CreateGroupResult['missingParticipants'] = dict();
    const added: string[] = [];
    for (const id of ids) {
      const phone = this.net.resolveUser(id);
      if (!phone || !this.net.isRegistered(phone)) missing[id] = { code: 404, message: 'The participant is not registered' };
      else if (phone !== creator && !added.includes(phone)) {
        g.participants.push({ phone, admin: false, superAdmin: false });
        added.push(phone);
      }
    }
    this.net.persist();
    this.notify(g, 'group_join', 'create', creator, [creator, ...added]);
    return { gid: g.gid, title, missingParticipants: missing };
  }

  add(actor: string, g: GroupRecord, ids: string[]): ParticipantResults {
    this.requireAdmin(g, actor);
    const results: ParticipantResults = dict();
    const added: string[] = [];
    for (const id of ids) {
      const phone = this.net.resolveUser(id);
      if (!phone || !this.net.isRegistered(phone)) results[id] = { code: 404, message: 'The participant is not registered' };
      else if (this.isMember(g, phone)) results[id] = { code: 409, message: 'The participant is already a group member' };
      else {
        g.participants.push({ phone, admin: false, superAdmin: false });
        g.former = g.former.filter((p) => p !== phone);
        added.push(phone);
        results[id] = { code: 200, message: 'The participant was added successfully' };
      }
    }
    this.net.persist();
    if (added.length > 0) this.notify(g, 'group_join', 'add', actor, added);
    return results;
  }

  remove(actor: string, g: GroupRecord, ids: string[]): void {
    this.requireAdmin(g, actor);
    const phones = this.members(g, ids).filter((p) => p !== g.owner || p === actor);
    this.drop(g, phones);
    if (phones.length > 0) this.notify(g, 'group_leave', 'remove', actor, phones, phones);
  }

  leave(phone: string, g: GroupRecord): void {
    this.requireMember(g, phone);
    this.drop(g, [phone]);
    // someone has to stay admin, as on the real network
    const first = g.participants[0];
    if (first && !g.participants.some((p) => p.admin)) first.admin = true;
    this.net.persist();
    this.notify(g, 'group_leave', 'leave', phone, [phone], [phone]);
  }

  setAdmin(actor: string, g: GroupRecord, ids: string[], admin: boolean): void {
    this.requireAdmin(g, actor);
    const phones = this.members(g, ids);
    for (const p of g.participants) if (phones.includes(p.phone) && !p.superAdmin) p.admin = admin;
    this.net.persist();
    if (phones.length > 0) this.notify(g, 'group_admin_changed', admin ? 'promote' : 'demote', actor, phones);
  }

  inviteCode(actor: string, g: GroupRecord): string {
    this.requireAdmin(g, actor);
    return g.inviteCode;
  }

  revokeInvite(actor: string, g: GroupRecord): string {
    this.requireAdmin(g, actor);
    g.inviteCode = newInviteCode();
    this.net.persist();
    return g.inviteCode;
  }

  setSubject(actor: string, g: GroupRecord, subject: string): void {
    this.requireMember(g, actor);
    if (!subject.trim() || characterCount(subject) > 100) throw new DriverError('subject must be 1 to 100 characters', 'INVALID_INPUT', true);
    g.subject = subject;
    this.net.persist();
    this.notify(g, 'group_update', 'subject', actor, [], [], subject);
  }

  setDescription(actor: string, g: GroupRecord, description: string): void {
    this.requireMember(g, actor);
    g.description = description;
    this.net.persist();
    this.notify(g, 'group_update', 'description', actor, [], [], description);
  }

  private members(g: GroupRecord, ids: string[]): string[] {
    return ids.map((id) => this.net.resolveUser(id)).filter((p): p is string => p !== null && this.isMember(g, p));
  }

  private drop(g: GroupRecord, phones: string[]): void {
    g.participants = g.participants.filter((p) => !phones.includes(p.phone));
    for (const p of phones) if (!g.former.includes(p)) g.former.push(p);
    this.net.persist();
  }

  /** Tell every current member (and `alsoTo`, e.g. who was just removed) what changed. */
  private notify(g: GroupRecord, event: GroupEvent, type: string, author: string, recipients: string[], alsoTo: string[] = [], body = ''): void {
    const key = newPhoneKey();
    const timestamp = Math.floor(this.net.now() / 1000);
    const targets = new Set([...g.participants.map((p) => p.phone), ...alsoTo]);
    for (const phone of targets) {
      this.net.emitTo(phone, () => {
        const n: WireGroupNotification = {
          id: serializeId(false, g.gid, key, userId(author)),
          chatId: g.gid,
          author: userId(author),
          recipientIds: recipients.map(userId),
          body,
          type,
          timestamp,
        };
        return { name: event, args: [n] };
      });
    }
  }
}
