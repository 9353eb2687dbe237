/**
 * A mapping's rules as one generated function, the rule program: (p, version, mod, path) → how many
 * (rule, choice) edges it wrote to `path`, the same edges in the same order as the interpreter
 * (evaluate.ts, interpretRules). HOT PATH: runs for every wrapped request of a mapped item.
 *
 * Per rule, in the interpreter's order: the A/B table read (`c = table[mod]`), the app-version range
 * as comparisons with its versions' numbers written in (version-range.ts, versionRangeSource), then the
 * condition's statements (condition/emit.ts), each failing test a `break` out of the rule's block.
 * Disabled rules apply to nobody and are left out. Nothing is called for a rule whose attributes are
 * scalars; the interpreter, for the same work, walks rules, fields and operators through a call and
 * a switch at each level.
 *
 * V8 optimizes a function up to a bytecode size; a long mapping is cut into chunks of a bounded
 * source size, run one after another by a small driver.
 *
 * Built on a mapping's first evaluation on the delivery thread (workers, which only render, never
 * build one). Where code generation from strings is refused (EvalError), there is no program and the
 * interpreter runs.
 */
import { CodeUnit } from '../codegen.js';
import { emitCondition } from '../condition/emit.js';
import { NO_VERSION_NUM } from '../../shared/app-version.js';
import { NO_CHOICE, PATCH_CHOICE, type CompiledRule, type RuleProgram } from './compiled.js';
import { pathEdge } from './interning.js';
import { versionRangeSource } from './version-range.js';

/** Source characters per chunk: well under the size up to which V8 optimizes a function. */
const CHUNK_SOURCE = 24 * 1024;

/** The rule program of `rules` (a compiled mapping's, in order), or null where code generation is refused. */
export function compileRuleProgram(rules: readonly CompiledRule[]): RuleProgram | null {
  const unit = new CodeUnit();
  const chunks: string[] = [];
  let chunk = '';
  for (let i = 0; i < rules.length; i++) {
    const source = ruleSource(rules[i]!, i, unit);
    if (chunk !== '' && chunk.length + source.length > CHUNK_SOURCE) {
      chunks.push(chunk);
      chunk = '';
    }
    chunk += source;
  }
  if (chunk !== '' || chunks.length === 0) chunks.push(chunk);
  const head = 'let c = 0, v, h = false;\n';
  if (chunks.length === 1) return unit.build<RuleProgram>(`return function rules(p, version, mod, path) {\nlet n = 0;\n${head}${chunks[0]}return n;\n};`);
  let body = '';
  let driver = '';
  for (let k = 0; k < chunks.length; k++) {
    body += `function chunk${k}(p, version, mod, path, n) {\n${head}${chunks[k]}return n;\n}\n`;
    driver += `n = chunk${k}(p, version, mod, path, n);\n`;
  }
  return unit.build<RuleProgram>(`${body}return function rules(p, version, mod, path) {\nlet n = 0;\n${driver}return n;\n};`);
}

function ruleSource(rule: CompiledRule, index: number, unit: CodeUnit): string {
  if (rule.disabled) return ''; // applies to nobody (its table holds NO_CHOICE for every mod)
  const table = rule.variantOfMod;
  const label = `rule${index}`;
  const fail = `break ${label};`;
  let code = `${label}: {\n`;
  if (table !== null) code += `c = ${unit.bind('table', table)}[mod];\nif (c === ${NO_CHOICE}) ${fail}\n`;
  if (rule.versions !== null) {
    // No version sent (app-version.ts NO_VERSION): outside every range.
    code += `if (version.num === ${NO_VERSION_NUM} || !${versionRangeSource(rule.versions, 'version')}) ${fail}\n`;
  }
  if (rule.predicate !== null) code += emitCondition(rule.predicate.root, unit, fail);
  // pathEdge(index, choice): a constant for a patch rule; linear in the choice read from the table.
  code += table === null ? `path[n++] = ${pathEdge(index, PATCH_CHOICE)};\n` : `path[n++] = ${pathEdge(index, 0)} + c;\n`;
  return `${code}}\n`;
}
