/**
 * The README's quick start with the typed client: `KEY=weft_sk_… npx tsx examples/quick-start.ts`
 * against `npm start` (WEFT_URL defaults to http://127.0.0.1:8080).
 */
import { createWeftClient } from '../src/client';

async function main() {
  const weft = createWeftClient({ baseUrl: process.env.WEFT_URL ?? 'http://127.0.0.1:8080', token: process.env.KEY });

  const ada = await weft.POST('/v1/ontology/nodes', {
    body: { type: 'person', name: 'Ada Lovelace', properties: { email: 'ada@example.org' } },
  });
  const engines = await weft.POST('/v1/ontology/nodes', { body: { type: 'organization', name: 'Analytical Engines' } });
  if (!ada.data || !engines.data) throw new Error(JSON.stringify(ada.error ?? engines.error));

  await weft.POST('/v1/ontology/edges', {
    body: { type: 'WORKS_AT', source_node_id: ada.data.id, target_node_id: engines.data.id },
  });

  const search = await weft.POST('/v1/ontology/search', { body: { q: 'Ada', top_k: 5 } });
  console.log(search.data?.results.map((result) => [result.node.name, result.score]));

  const prompt = await weft.POST('/v1/ontology/prompt', { body: { prompt: 'Where does Ada Lovelace work?' } });
  console.log(prompt.data?.answer, prompt.data?.citations, prompt.data?.credit_receipt);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
