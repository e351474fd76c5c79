/**
 * The `weft` operator CLI (`npm run --silent cli -- …`):
 *   bootstrap [--credits N] [--workspace ID] [--json]
 *   credits grant --tenant ID --amount N
 * It works on the owner connection: provisioning is outside the request path.
 */
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { createJwtService } from '../platform/auth/tokens';
import { loadConfig } from '../platform/config';
import { createMigrationDataSource } from '../platform/db/data-source';
import { DomainError } from '../platform/errors';
import { createProvisioning } from '../tenancy/service';

const USAGE = `usage:
  weft bootstrap [--credits N] [--workspace WORKSPACE_ID] [--json]
  weft credits grant --tenant TENANT_ID --amount N`;

const nonNegativeInt = z.coerce.number().int().min(0);

async function run(argv: string[]): Promise<unknown> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      credits: { type: 'string' },
      workspace: { type: 'string' },
      json: { type: 'boolean' },
      tenant: { type: 'string' },
      amount: { type: 'string' },
    },
  });
  const config = loadConfig();
  const ownerDataSource = await createMigrationDataSource(config).initialize();
  const provisioning = createProvisioning({ ownerDataSource, jwt: createJwtService(config) });
  try {
    const command = positionals.join(' ');
    if (command === 'bootstrap') {
      return await provisioning.bootstrap({
        credits: values.credits === undefined ? undefined : nonNegativeInt.parse(values.credits),
        workspaceId: values.workspace === undefined ? undefined : z.uuid().parse(values.workspace),
      });
    }
    if (command === 'credits grant') {
      if (!values.tenant || values.amount === undefined) throw new UsageError();
      return await provisioning.grantCredits(
        z.uuid().parse(values.tenant),
        z.coerce.number().int().min(1).parse(values.amount),
      );
    }
    throw new UsageError();
  } finally {
    await ownerDataSource.destroy();
  }
}

class UsageError extends Error {}

run(process.argv.slice(2)).then(
  (result) => {
    process.stdout.write(`${JSON.stringify(result)}\n`);
  },
  (error) => {
    if (error instanceof UsageError) console.error(USAGE);
    else if (error instanceof z.ZodError)
      console.error(`invalid argument: ${error.issues.map((i) => i.message).join('; ')}\n${USAGE}`);
    else if (error instanceof DomainError) console.error(String(error.detail));
    else console.error(error instanceof Error ? error.message : error);
    process.exit(error instanceof UsageError || error instanceof z.ZodError ? 2 : 1);
  },
);
