import { Link } from "../shared/router";
import type { ConsoleEnv } from "./App";

export function Home({ env }: { env: ConsoleEnv }) {
  return (
    <>
      <h1>Operations Console</h1>
      <p>
        The Console is where operators follow and clean up the work of the workspace <strong>{env.context.workspace.name}</strong>. People delegate work in
        the <a href={env.workplaceUrl}>Workplace</a>.
      </p>
      <ul>
        <li><Link href="/tasks">Tasks</Link>: every Task of the workspace, live.</li>
        <li><Link href="/triggers">Triggers</Link>: schedules that submit autonomous Work, their next instants and their history.</li>
        <li><Link href="/cleanup">Cleanup</Link>: delete finished Tasks, technical runs, Entries, Flows and Agents.</li>
        <li><Link href="/entries">Entries</Link>: what each Entry is bound to and which Flow it runs.</li>
        <li><Link href="/settings/organization/members">Members</Link> and <Link href="/settings/organization/access">access</Link> of the organization.</li>
      </ul>
    </>
  );
}
