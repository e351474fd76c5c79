import type { MigrationInterface, QueryRunner } from 'typeorm';
import { grantToAppRole } from './1763780008400-credit-settlement';

/**
 * A trigger's revision, bumped by the database on every UPDATE of the row (a PATCH: enable or
 * disable, filter, run template, rotation), and returned by the intake's slug function. The intake
 * caches a trigger's non-secret configuration in process keyed by (id, revision), so a delivery
 * whose revision is current skips reading the trigger; any change makes the next intake read it
 * again. A BEFORE UPDATE trigger rather than the repository's UPDATE, so no write path can forget it.
 *
 * The slug function stays narrow: ids, the revision (a counter, nothing about the content) and the
 * sealed secrets (the previous one only while its grace lasts). Disabled and deleted triggers still
 * resolve to nothing, on every request.
 */
export class WebhookTriggerRevision1763780009450 implements MigrationInterface {
  name = 'WebhookTriggerRevision1763780009450';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
ALTER TABLE webhook_triggers ADD COLUMN revision bigint NOT NULL DEFAULT 1;

CREATE FUNCTION weft_webhook_trigger_bump_revision() RETURNS trigger
  LANGUAGE plpgsql SET search_path = public AS $$
BEGIN
  NEW.revision := OLD.revision + 1;
  RETURN NEW;
END $$;
CREATE TRIGGER webhook_triggers_revision BEFORE UPDATE ON webhook_triggers
  FOR EACH ROW EXECUTE FUNCTION weft_webhook_trigger_bump_revision();

DROP FUNCTION weft_webhook_trigger_for_slug(text);
CREATE FUNCTION weft_webhook_trigger_for_slug(p_slug text)
  RETURNS TABLE (trigger_id uuid, workspace_id uuid, revision bigint, secret_sealed text,
    previous_secret_sealed text)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public
  AS $$
    SELECT t.id, t.workspace_id, t.revision, t.secret_sealed,
      CASE WHEN t.previous_secret_expires_at > now() THEN t.previous_secret_sealed END
    FROM webhook_triggers t WHERE t.slug = p_slug AND t.enabled
  $$;
REVOKE ALL ON FUNCTION weft_webhook_trigger_for_slug(text) FROM PUBLIC;
`);
    await grantToAppRole(q, 'weft_webhook_trigger_for_slug(text)');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
DROP FUNCTION weft_webhook_trigger_for_slug(text);
CREATE FUNCTION weft_webhook_trigger_for_slug(p_slug text)
  RETURNS TABLE (trigger_id uuid, workspace_id uuid, secret_sealed text, previous_secret_sealed text)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public
  AS $$
    SELECT t.id, t.workspace_id, t.secret_sealed,
      CASE WHEN t.previous_secret_expires_at > now() THEN t.previous_secret_sealed END
    FROM webhook_triggers t WHERE t.slug = p_slug AND t.enabled
  $$;
REVOKE ALL ON FUNCTION weft_webhook_trigger_for_slug(text) FROM PUBLIC;
DROP TRIGGER IF EXISTS webhook_triggers_revision ON webhook_triggers;
DROP FUNCTION IF EXISTS weft_webhook_trigger_bump_revision();
ALTER TABLE webhook_triggers DROP COLUMN IF EXISTS revision;
`);
    await grantToAppRole(q, 'weft_webhook_trigger_for_slug(text)');
  }
}
