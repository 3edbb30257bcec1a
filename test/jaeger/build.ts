// `pnpm test:jaeger`'s first step: says in one line and exits 1 when Go is missing (never a
// silent pass), else builds Jaeger (or finds it in Go's cache) with a progress line every 15 s,
// so the test that follows starts it at once.
import { buildJaeger, findGo, GO_MISSING } from './go.js';

const go = findGo();
if (!go) {
  console.error(GO_MISSING);
  process.exit(1);
}
try {
  await buildJaeger(go);
} catch (e) {
  console.error(`test:jaeger: ${(e as Error).message}`);
  process.exit(1);
}
