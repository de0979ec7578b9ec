import type { TwinSummary } from '../../contract.ts';
import { engineItems, newestFirst, summaryTable, text } from '../../kit/summary.ts';

/** The MongoDB Atlas twin's snapshot as projects, clusters, database users and document counts per collection. */
export function summarizeMongoAtlas(state: unknown): TwinSummary {
  const projects = engineItems(state, 'mongoatlas.projects');
  const clusters = engineItems(state, 'mongoatlas.clusters');
  const projectName = new Map(projects.map((p) => [p.group_id, text(p.name)]));
  const clusterName = new Map(clusters.map((c) => [c.cluster_id, text(c.name)]));
  const counts = new Map<string, number>();
  for (const d of engineItems(state, 'mongoatlas.documents')) {
    const key = `${text(d.cluster_id)}\u0000${text(d.database)}\u0000${text(d.collection)}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return {
    tables: [
      summaryTable(
        'Projects',
        ['Id', 'Name', 'Clusters'],
        newestFirst(projects).map((p) => [text(p.group_id), text(p.name), text(p.cluster_count)]),
      ),
      summaryTable(
        'Clusters',
        ['Name', 'Project', 'State', 'Region', 'Size'],
        newestFirst(clusters).map((c) => {
          const provider = (c.provider_settings ?? {}) as Record<string, unknown>;
          return [
            text(c.name),
            projectName.get(c.group_id) ?? '',
            text(c.state),
            text(provider.region_name),
            text(provider.instance_size_name),
          ];
        }),
      ),
      summaryTable(
        'Database users',
        ['Username', 'Project'],
        newestFirst(engineItems(state, 'mongoatlas.users')).map((u) => [
          text(u.username),
          projectName.get(u.group_id) ?? '',
        ]),
      ),
      summaryTable(
        'Collections',
        ['Cluster', 'Database', 'Collection', 'Documents'],
        engineItems(state, 'mongoatlas.collections').map((c) => [
          clusterName.get(c.cluster_id) ?? '',
          text(c.database),
          text(c.name),
          String(counts.get(`${text(c.cluster_id)}\u0000${text(c.database)}\u0000${text(c.name)}`) ?? 0),
        ]),
      ),
    ],
  };
}
