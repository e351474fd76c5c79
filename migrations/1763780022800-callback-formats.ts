import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A run callback's body format (issue 42, A2A push): `weft` posts Weft's run-callback envelope, `a2a`
 * what an A2A server's push notification sender posts (a StreamResponse in A2A's JSON). An A2A push
 * config also brings what its receiver checks (`token`, `authentication`): sealed, like the secret.
 */
export class CallbackFormats1763780022800 implements MigrationInterface {
  name = 'CallbackFormats1763780022800';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
ALTER TABLE run_callback_subscriptions
  ADD COLUMN format text NOT NULL DEFAULT 'weft' CHECK (format IN ('weft', 'a2a')),
  -- AES-256-GCM under WEFT_ENCRYPTION_KEY, bound to the workspace and subscription id: {token, authentication}.
  ADD COLUMN receiver_auth_sealed text;
`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE run_callback_subscriptions DROP COLUMN receiver_auth_sealed, DROP COLUMN format`);
  }
}
