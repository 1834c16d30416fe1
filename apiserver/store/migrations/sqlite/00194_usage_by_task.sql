-- +goose Up
-- A Task's usage (its read, the Task list, a page of the kube API's tasks) sums the model calls
-- of the Task's runs: the runs of a page's Tasks are found by Task, not by scanning the
-- workspace's runs.
CREATE INDEX flow_runs_task ON flow_runs (work_task_id);

-- +goose Down
DROP INDEX flow_runs_task;
