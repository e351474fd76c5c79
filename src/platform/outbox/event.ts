import type { z } from 'zod';

/**
 * What the domain knows of one outbox event: its name (the row's `event_type`), the version of its
 * payload, and the payload's zod schema. Declared once beside its feature (`src/<feature>/events.ts`);
 * the writer (`enqueue`) takes it with a typed payload and the relay parses each row with it before
 * any handler sees it. Rows carry no version column: every row of a name is read with the one
 * contract registered for it, so a change a stored row would not pass keeps accepting the old shape
 * (or takes a new name).
 */
export interface EventContract<Name extends string = string, Schema extends z.ZodType = z.ZodType> {
  readonly name: Name;
  readonly version: number;
  readonly payload: Schema;
}

/** The payload a writer passes (before the schema's defaults and transforms). */
export type EventInput<E extends EventContract> = z.input<E['payload']>;
/** The payload a handler receives (parsed). */
export type EventPayload<E extends EventContract> = z.output<E['payload']>;

export const defineEvent = <const Name extends string, Schema extends z.ZodType>(
  name: Name,
  version: number,
  payload: Schema,
): EventContract<Name, Schema> => ({ name, version, payload });
