/**
 * `npm run client:generate`: the TypeScript client's types (`src/client/schema.ts`), generated with
 * openapi-typescript from the OpenAPI document that the route list builds (no database needed).
 * `test/unit/client-schema.test.ts` fails when the committed file is stale.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { clientSchemaSource } from '../src/client/generate';

const target = path.resolve(__dirname, '..', 'src', 'client', 'schema.ts');

clientSchemaSource().then(
  (source) => {
    writeFileSync(target, source);
    console.log(`wrote ${path.relative(process.cwd(), target)}`);
  },
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
