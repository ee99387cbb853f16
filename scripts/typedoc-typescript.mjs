// Loaded with `node --import` before TypeDoc: TypeDoc reads TypeScript through its compiler API,
// which TypeScript 7 (the package's compiler) no longer has. TypeDoc's imports of `typescript`
// go to `typescript-for-typedoc`, a devDependency alias of TypeScript 6 (npm:typescript@6.0.x);
// nothing else in that process imports TypeScript.
import { register } from "node:module";

register(
  `data:text/javascript,${encodeURIComponent(`
export async function resolve(specifier, context, next) {
  if (specifier === "typescript" || specifier.startsWith("typescript/")) {
    return next(specifier.replace(/^typescript/, "typescript-for-typedoc"), context);
  }
  return next(specifier, context);
}`)}`,
);
