-- Runner processes sharing this database (server/runners/, docs/scaling.md), and the runner that holds
-- each sandbox: a runner's start finds its own sandboxes, and a lost runner's are failed, by this index.

-- Up Migration

CREATE TABLE runners (id text PRIMARY KEY, data jsonb NOT NULL CHECK (data ->> 'id' = id));
CREATE INDEX sandboxes_runner_id_idx ON sandboxes ((data ->> 'runner_id'));

-- Down Migration

DROP INDEX sandboxes_runner_id_idx;
DROP TABLE runners;
