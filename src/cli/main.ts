/**
 * The `weft` operator CLI (`npm run --silent cli -- …`):
 *   bootstrap [--credits N] [--workspace ID] [--json]
 *   credits grant --tenant ID --amount N
 *   tokens revoke (--jti ID | --token JWT)
 *   operator token [--label TEXT] [--days N]     (a codec token that decodes every workspace's payloads)
 *   operator revoke --id TOKEN_ID
 *   outbox dead-letters [--limit N]
 *   outbox requeue (--id ID ... | --all)
 *   index <repo-dir> [--workspace ID] [--base-url URL] [--api-key KEY] [--repo NAME] [--include PREFIX]
 *         [--max-commits N]
 *   triggers send <slug> --scheme SCHEME --body FILE --secret SECRET [--base-url URL]
 * The provisioning commands work on the owner connection (outside the request path); `index` is an
 * API client: it parses the repository here and sends batches to POST /v1/code/ingest.
 */
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { createMigrationDataSource } from '../app/data-source';
import { revokeUserToken } from '../platform/auth/repository';
import { createJwtService } from '../platform/auth/tokens';
import { loadConfig } from '../platform/config';
import { BadRequestError, DomainError } from '../platform/errors';
import { deadLetterCount, listDeadLetters, requeueDeadLetters } from '../platform/outbox/repository';
import { createProvisioning } from '../tenancy/service';
import { SIGNATURE_SCHEMES } from '../triggers/schemes';
import { indexRepository } from './index/command';
import { IndexError } from './index/git';
import { mintOperatorToken, revokeOperatorToken } from './operator';
import { sendTestDelivery } from './send';

const USAGE = `usage:
  weft bootstrap [--credits N] [--workspace WORKSPACE_ID] [--json]
  weft credits grant --tenant TENANT_ID --amount N
  weft tokens revoke (--jti JWT_ID | --token USER_JWT)
  weft operator token [--label TEXT] [--days N]
  weft operator revoke --id TOKEN_ID
  weft outbox dead-letters [--limit N]     (the count and the newest N dead letters, default 50)
  weft outbox requeue (--id OUTBOX_ID ... | --all)   (back in line; the sweep delivers them within a minute)
  weft index <repo-dir> [--workspace ID] [--base-url URL] [--api-key KEY] [--repo NAME] [--include PREFIX]
             [--max-commits N]   (defaults: WEFT_BASE_URL or http://127.0.0.1:8080, WEFT_API_KEY, 1000 commits)
  weft triggers send <slug> --scheme weft|stripe|github|slack|standard --body FILE --secret SECRET [--base-url URL]
             (signs FILE as that sender does and posts it to the trigger's intake; exit 1 unless 2xx)`;

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
      jti: { type: 'string' },
      token: { type: 'string' },
      label: { type: 'string' },
      days: { type: 'string' },
      'base-url': { type: 'string' },
      'api-key': { type: 'string' },
      repo: { type: 'string' },
      include: { type: 'string' },
      'max-commits': { type: 'string' },
      limit: { type: 'string' },
      id: { type: 'string', multiple: true },
      all: { type: 'boolean' },
      scheme: { type: 'string' },
      body: { type: 'string' },
      secret: { type: 'string' },
    },
  });
  if (positionals[0] === 'index') {
    const [, dir, ...extra] = positionals;
    const apiKey = values['api-key'] ?? process.env.WEFT_API_KEY;
    if (!dir || extra.length > 0 || !apiKey) throw new UsageError();
    return indexRepository({
      dir,
      apiKey,
      baseUrl: values['base-url'] ?? process.env.WEFT_BASE_URL ?? 'http://127.0.0.1:8080',
      workspace: values.workspace === undefined ? undefined : z.uuid().parse(values.workspace),
      repo: values.repo,
      include: values.include,
      maxCommits: z.coerce.number().int().min(0).max(100_000).default(1000).parse(values['max-commits']),
    });
  }
  if (positionals[0] === 'triggers' && positionals[1] === 'send') {
    const [, , slug, ...extra] = positionals;
    if (!slug || extra.length > 0 || !values.body || !values.secret) throw new UsageError();
    const sent = await sendTestDelivery({
      slug,
      scheme: z.enum(SIGNATURE_SCHEMES).default('weft').parse(values.scheme),
      bodyFile: values.body,
      secret: values.secret,
      baseUrl: values['base-url'] ?? process.env.WEFT_BASE_URL ?? 'http://127.0.0.1:8080',
    });
    if (sent.status < 200 || sent.status > 299) process.exitCode = 1;
    return sent;
  }
  const config = loadConfig();
  const ownerDataSource = await createMigrationDataSource(config).initialize();
  const jwt = createJwtService(config);
  const provisioning = createProvisioning({ ownerDataSource, jwt });

  /**
   * Refuses a user JWT from its next request on. By its jti (kept until the longest lifetime a
   * JWT of this configuration can have), or by the token itself (kept until its own expiry).
   */
  async function revokeToken(options: { jti?: string; token?: string }) {
    if (Boolean(options.jti) === Boolean(options.token)) throw new UsageError();
    const claims = options.token ? await jwt.verify(options.token) : undefined;
    if (options.token && claims?.audience !== 'user') throw new BadRequestError('Not a valid, unexpired user JWT');
    const target = claims
      ? { jti: claims.tokenId, expiresAt: claims.expiresAt }
      : { jti: z.uuid().parse(options.jti), expiresAt: new Date(Date.now() + config.USER_JWT_TTL_SECONDS * 1000) };
    const row = await ownerDataSource.transaction((m) => revokeUserToken(m, target));
    return { jti: row.jti, revoked_at: row.revokedAt.toISOString(), expires_at: row.expiresAt.toISOString() };
  }

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
    if (command === 'tokens revoke') return await revokeToken(values);
    if (command === 'operator token') {
      return await mintOperatorToken(ownerDataSource, {
        label: z.string().trim().min(1).max(100).default('operator').parse(values.label),
        days: values.days === undefined ? undefined : z.coerce.number().int().min(1).max(3650).parse(values.days),
      });
    }
    if (command === 'operator revoke') {
      if (values.id?.length !== 1) throw new UsageError();
      return await revokeOperatorToken(ownerDataSource, z.uuid().parse(values.id[0]));
    }
    if (command === 'outbox dead-letters') {
      const limit = z.coerce.number().int().min(1).max(1000).default(50).parse(values.limit);
      return await ownerDataSource.transaction(async (m) => ({
        count: await deadLetterCount(m),
        dead_letters: await listDeadLetters(m, limit),
      }));
    }
    if (command === 'outbox requeue') {
      const ids = values.id ?? [];
      if (Boolean(values.all) === ids.length > 0) throw new UsageError();
      const targets = values.all
        ? 'all'
        : ids.map((id) =>
            z
              .string()
              .regex(/^[0-9]{1,19}$/)
              .parse(id),
          );
      return { requeued: await ownerDataSource.transaction((m) => requeueDeadLetters(m, targets)) };
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
    else if (error instanceof IndexError) console.error(`weft index: ${error.message}`);
    else console.error(error instanceof Error ? error.message : error);
    process.exit(error instanceof UsageError || error instanceof z.ZodError ? 2 : 1);
  },
);
