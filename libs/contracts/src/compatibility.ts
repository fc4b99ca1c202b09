import { createAvroType } from './avro-types';

export type CompatibilityResult =
  { readonly compatible: true } | { readonly compatible: false; readonly reason: string };

/**
 * BACKWARD compatibility of two self-contained Avro schemas: can a consumer using `reader` (the new
 * schema) read every record written with `writer` (an older one)? Decided by building an avsc
 * resolver from writer to reader, with the same type options the decoder uses, so "compatible" here
 * means exactly "our decoder will read it". avsc applies the Avro resolution rules the registry
 * checks: a field added to the reader needs a default, an enum symbol or union branch may not
 * disappear (unless the enum has a default), promotions only widen (int → long → float → double,
 * string ↔ bytes), record names must match (or an alias).
 */
export function checkBackwardCompatibility(reader: object, writer: object): CompatibilityResult {
  try {
    createAvroType(reader).createResolver(createAvroType(writer));
    return { compatible: true };
  } catch (error) {
    return { compatible: false, reason: (error as Error).message };
  }
}
