import type { MigrationInterface, QueryRunner } from 'typeorm';
import { grantToAppRole } from './1763780008400-credit-settlement';

/**
 * Issue 28: a trigger's signature scheme (weft, stripe, github, slack, standard), which the intake
 * needs before it reads anything else of the trigger, so the slug function returns it beside the
 * sealed secrets. Existing triggers keep the contract's own scheme.
 */
export class WebhookSignatureSchemes1763780010700 implements MigrationInterface {
  name = 'WebhookSignatureSchemes1763780010700';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
ALTER TABLE webhook_triggers ADD COLUMN signature_scheme text NOT NULL DEFAULT 'weft'
  CONSTRAINT webhook_triggers_signature_scheme
  CHECK (signature_scheme IN ('weft', 'stripe', 'github', 'slack', 'standard'));

DROP FUNCTION weft_webhook_trigger_for_slug(text);
CREATE FUNCTION weft_webhook_trigger_for_slug(p_slug text)
  RETURNS TABLE (trigger_id uuid, workspace_id uuid, revision bigint, secret_sealed text,
    previous_secret_sealed text, signature_scheme text)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public
  AS $$
    SELECT t.id, t.workspace_id, t.revision, t.secret_sealed,
      CASE WHEN t.previous_secret_expires_at > now() THEN t.previous_secret_sealed END, t.signature_scheme
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
  RETURNS TABLE (trigger_id uuid, workspace_id uuid, revision bigint, secret_sealed text,
    previous_secret_sealed text)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public
  AS $$
    SELECT t.id, t.workspace_id, t.revision, t.secret_sealed,
      CASE WHEN t.previous_secret_expires_at > now() THEN t.previous_secret_sealed END
    FROM webhook_triggers t WHERE t.slug = p_slug AND t.enabled
  $$;
REVOKE ALL ON FUNCTION weft_webhook_trigger_for_slug(text) FROM PUBLIC;
ALTER TABLE webhook_triggers DROP COLUMN IF EXISTS signature_scheme;
`);
    await grantToAppRole(q, 'weft_webhook_trigger_for_slug(text)');
  }
}
