import path from 'node:path';
import type { DataConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { createPayloadCodec, dataConverter } from '../../src/platform/temporal/codec';

/** Recorded workflow histories (`npm run histories:record`), replayed by test/workflow-replay.test.ts. */
export const HISTORIES_DIR = path.resolve(__dirname, '..', 'histories');

/**
 * The payload key the fixtures are recorded and replayed with (64 hex digits): fixed and set on both
 * sides, so a JWT_SECRET in the environment, from which the test key is otherwise derived, cannot
 * make the fixtures unreadable. A test key: it guards nothing.
 */
export const HISTORY_ENCRYPTION_KEY = '27b8fd4140fa41a08636fbe67f2fa542a51d6ba219c2028e5bf226ebadfccfa5';

/** The data converter that opens the fixtures' payloads, as the worker's does. */
export const historyDataConverter = (): DataConverter =>
  dataConverter(createPayloadCodec({ WEFT_ENCRYPTION_KEY: Buffer.from(HISTORY_ENCRYPTION_KEY, 'hex') }));

const History = temporal.api.history.v1.History;

/**
 * A history as fixture JSON (int64 as strings, enums by name, bytes as base64). Not the SDK's
 * `historyToJSON`/`historyFromJSON`: with two copies of protobufjs 8 in node_modules (under
 * @temporalio/proto and @temporalio/common) its `instanceof Type` check fails ("type must be a Type").
 */
export function historyToFixture(history: temporal.api.history.v1.IHistory): string {
  const plain = History.toObject(History.fromObject(history), { longs: String, enums: String, bytes: String });
  return `${JSON.stringify(plain, null, 2)}\n`;
}

/** A fixture back as a History message, which the replay worker takes as it is. */
export const historyFromFixture = (json: string): temporal.api.history.v1.IHistory =>
  History.fromObject(JSON.parse(json));
