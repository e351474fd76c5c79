import type { UnitOfWork } from '../platform/db/unit-of-work';
import { WorkspaceSettings } from './entities';
import { ontologyConfigRoutes } from './routes';
import type { OntologyConfigService } from './service';
import { createOntologyConfigService } from './service';

/** The workspace's search, importance and resolver settings. */
export const ontologyConfigFeature = {
  name: 'ontology-config',
  services: {
    ontologyConfig: (ctx: { uow: UnitOfWork }) => createOntologyConfigService(ctx),
  },
  tags: {
    'ontology-config': 'The workspace’s search, importance and resolver settings.',
  },
  entities: [WorkspaceSettings],
  routes: (runtime: { services: { ontologyConfig: OntologyConfigService } }) =>
    ontologyConfigRoutes(runtime.services.ontologyConfig),
};
