/** The reference model now ships in `sluice/testing` (src/testing/oracle.ts); tests import it from here. */
export { modelOf, type OracleBan, RuleOracle } from "../../src/testing/oracle.ts";
