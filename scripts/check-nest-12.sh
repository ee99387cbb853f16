#!/usr/bin/env bash
# The NestJS migration guide says its side-by-side test passes on Nest 11 (the devDependencies,
# run by `npm test`) and on Nest 12: this runs that test against Nest 12, installed from npm into
# a scratch directory beside a copy of the built package (test/migrate/vitest.nest-version.config.ts
# says why sluice must sit beside that Nest). Needs `npm run build` first; .ci/run calls it.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f dist/nest/index.js ] || npm run build
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
npm init -y >/dev/null
npm install --no-audit --no-fund --save-exact \
  @nestjs/common@12.6.3 @nestjs/core@12.6.3 @nestjs/platform-express@12.6.3 @nestjs/throttler@6.7.1 \
  reflect-metadata@0.2.2 rxjs@7.8.2 yaml >/dev/null
cd - >/dev/null
mkdir -p "$dir/node_modules/sluice"
cp -r dist package.json "$dir/node_modules/sluice/"
NEST_MODULES="$dir/node_modules" npx vitest run -c test/migrate/vitest.nest-version.config.ts
