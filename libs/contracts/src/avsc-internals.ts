/**
 * The parts of avsc 5.7 internals this package relies on, typed in one place. avsc's public typings
 * omit them, but they are the documented extension surface for logical types (`_read`, `_write`,
 * `_update` are what avsc's own logical types and resolvers call), and the avsc version is pinned by
 * the lockfile; the unit tests in this folder exercise every one of them.
 */
import type { Type } from 'avsc';

/** avsc's cursor over a buffer. Reads past the end do not throw; they make `isValid()` false. */
export interface AvscTap {
  buf: Buffer;
  pos: number;
  isValid(): boolean;
  readLong(): number;
  skipLong(): void;
  readString(): string | undefined;
  writeLong(n: number): void;
  /** Marks the tap as overrun, so the top-level decode fails with "truncated buffer". */
  _invalidate(): void;
}

/** What avsc builds in `createResolver`: a reader for one writer type. Frozen once built. */
export interface AvscResolver {
  _read: ((tap: AvscTap) => unknown) | null;
  itemsType: AvscReadable | null;
  valuesType: AvscReadable | null;
}

/** Anything with a `_read`: a type, or a resolver standing in for one. */
export interface AvscReadable {
  _read(tap: AvscTap): unknown;
}

export interface AvscTypeInternals extends AvscReadable {
  _write(tap: AvscTap, value: unknown): void;
  _check(value: unknown, flags?: unknown, hook?: unknown, path?: unknown): boolean;
}

export interface AvscUnionInternals extends Type {
  readonly types: readonly (Type & AvscTypeInternals)[];
}

export interface AvscRecordInternals extends Type {
  readonly fields: readonly { readonly name: string; readonly type: Type }[];
}

export function internals(type: Type): Type & AvscTypeInternals {
  return type as Type & AvscTypeInternals;
}
