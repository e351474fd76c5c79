import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `duplicate_of` and `redelivery_of` become plain uuid columns. As foreign keys with ON DELETE SET
 * NULL, purging an original (retention deletes by age, so an original goes before its later
 * duplicates and redeliveries) set their references to NULL, which made them look like originals
 * of the same key to the partial unique index `webhook_deliveries_key_idx`: a unique violation
 * that failed the purge batch on every retry. Now a purged original leaves a dangling reference,
 * which still tells the record was a duplicate or a redelivery, and of which delivery.
 */
export class WebhookDeliveryReferences1763780009500 implements MigrationInterface {
  name = 'WebhookDeliveryReferences1763780009500';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
ALTER TABLE webhook_deliveries
  DROP CONSTRAINT webhook_deliveries_duplicate_of_fkey,
  DROP CONSTRAINT webhook_deliveries_redelivery_of_fkey;`);
  }

  async down(q: QueryRunner): Promise<void> {
    // References left dangling by a purge would fail the constraints: they are cleared first.
    await q.query(`
UPDATE webhook_deliveries d SET duplicate_of = NULL
  WHERE duplicate_of IS NOT NULL AND NOT EXISTS (SELECT 1 FROM webhook_deliveries o WHERE o.id = d.duplicate_of);
UPDATE webhook_deliveries d SET redelivery_of = NULL
  WHERE redelivery_of IS NOT NULL AND NOT EXISTS (SELECT 1 FROM webhook_deliveries o WHERE o.id = d.redelivery_of);
ALTER TABLE webhook_deliveries
  ADD CONSTRAINT webhook_deliveries_duplicate_of_fkey
    FOREIGN KEY (duplicate_of) REFERENCES webhook_deliveries(id) ON DELETE SET NULL,
  ADD CONSTRAINT webhook_deliveries_redelivery_of_fkey
    FOREIGN KEY (redelivery_of) REFERENCES webhook_deliveries(id) ON DELETE SET NULL;`);
  }
}
