/** Identifiers: prefixed, random, URL-safe. */
import { randomBytes, randomUUID } from 'node:crypto';


export const newJobId = () => `wq_${randomBytes(12).toString('hex')}`;
export const newEventId = () => `ev_${randomBytes(12).toString('hex')}`;
export const newMediaId = () => `md_${randomBytes(12).toString('hex')}`;
export const newInstanceId = () => randomUUID();
/** API key `wapi_<NAME>_<random>`: 32 characters of randomness. */
export const newApiKey = (name: string) => `wapi_${name}_${randomBytes(24).toString('base64url')}`;
export const newAdminToken = () => `mgwadm_${randomBytes(24).toString('base64url')}`;
