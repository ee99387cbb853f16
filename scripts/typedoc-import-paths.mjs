// A TypeDoc plugin: names each module of the API reference by the path users import it by
// (`sluice/store`), read from package.json `exports`, rather than by its source path
// (`stores/author`). A module no export names is a warning (a treated-as-error build fails).
import { readFileSync } from "node:fs";

/** Source path (as TypeDoc names modules: no `src/`, no `/index`) → import path. */
function importPaths() {
  const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
  const names = new Map();
  for (const [subpath, target] of Object.entries(pkg.exports)) {
    if (subpath === "./package.json") continue;
    const types = typeof target === "string" ? target : target.types;
    const source = types
      .replace(/^\.\/dist\//, "")
      .replace(/\.d\.ts$/, "")
      .replace(/\/index$/, "");
    names.set(source, subpath === "." ? pkg.name : `${pkg.name}/${subpath.slice(2)}`);
  }
  return names;
}

/** ReflectionKind.Module (typedoc's enum; read by value so this file imports nothing of TypeDoc). */
const MODULE = 2;

/** TypeDoc's plugin entry point. */
export function load(app) {
  const names = importPaths();
  app.converter.on("resolveBegin", (context) => {
    for (const child of context.project.children ?? []) {
      if (child.kind !== MODULE) continue;
      const name = names.get(child.name);
      if (name === undefined) app.logger.warn(`API reference: no package.json export for module ${child.name}`);
      else child.name = name;
    }
  });
}
