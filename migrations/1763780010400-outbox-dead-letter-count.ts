import type { MigrationInterface, QueryRunner } from 'typeorm';
import { grantToAppRole } from './1763780008400-credit-settlement';

/**
 * How many outbox rows are dead-lettered, across every workspace: the sweep reports it each pass
 * (an alert while it is above zero) without reading any row past RLS. A definer function, like
 * `weft_outbox_pending_workspaces`, that answers a count only.
 */
export class OutboxDeadLetterCount1763780010400 implements MigrationInterface {
  name = 'OutboxDeadLetterCount1763780010400';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
CREATE FUNCTION weft_outbox_dead_letter_count() RETURNS int
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public
  AS $$ SELECT count(*)::int FROM outbox WHERE dead_lettered_at IS NOT NULL $$;
REVOKE ALL ON FUNCTION weft_outbox_dead_letter_count() FROM PUBLIC;
`);
    await grantToAppRole(q, 'weft_outbox_dead_letter_count()');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION IF EXISTS weft_outbox_dead_letter_count();`);
  }
}
