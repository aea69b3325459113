/** The fields of a location message, as every layer reads them (send schema, stored payload, sandbox RPC). */
import { number, optional, string } from 'superstruct';

export const LOCATION_FIELDS = {
  latitude: number(),
  longitude: number(),
  name: optional(string()),
  address: optional(string()),
  url: optional(string()),
  description: optional(string()),
};
