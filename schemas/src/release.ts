/**
 * Snapshots the current schema of every contract that changed since its latest release as
 * `schemas/released/<Name>/v<N+1>.avsc` (v1 when it was never released).
 *
 *   npm run schemas:release             write the snapshots
 *   npm run schemas:release -- --check  list unreleased changes, exit 1 if there are any
 *
 * Run it when a schema change is merged for deployment, and commit the snapshot with the change. It
 * does not judge compatibility itself: the compatibility unit test in libs/contracts checks the
 * current schemas, and every released version, against all earlier releases (the same rule the
 * registry enforces as BACKWARD), so a release of an incompatible schema fails `npm test`.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { CONTRACT_SCHEMAS, releasedVersions } from './contract-schemas';
import { planRelease, releasedFileText } from './release-plan';
import { RELEASED_DIR } from './schema-files';

const plan = planRelease(CONTRACT_SCHEMAS, releasedVersions);
const check = process.argv.includes('--check');

if (plan.length === 0) {
  console.log('every contract matches its latest release');
} else {
  for (const release of plan) {
    const file = join(RELEASED_DIR, release.name, `v${release.version}.avsc`);
    if (check) {
      console.log(`unreleased change: ${release.name} would become v${release.version}`);
      continue;
    }
    mkdirSync(join(RELEASED_DIR, release.name), { recursive: true });
    writeFileSync(file, releasedFileText(release.schema), { flag: 'wx' });
    console.log(`released ${release.name} v${release.version} → ${relative(process.cwd(), file)}`);
  }
  if (check) process.exitCode = 1;
}
