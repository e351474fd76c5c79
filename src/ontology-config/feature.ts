import { WorkspaceSettings } from './entities';
import { ontologyConfigRoutes } from './routes';
import type { OntologyConfigService } from './service';

/** The workspace's search, importance and resolver settings. */
export const ontologyConfigFeature = {
  name: 'ontology-config',
  tags: {
    'ontology-config': 'The workspace’s search, importance and resolver settings.',
  },
  entities: [WorkspaceSettings],
  routes: (runtime: { services: { ontologyConfig: OntologyConfigService } }) =>
    ontologyConfigRoutes(runtime.services.ontologyConfig),
};
