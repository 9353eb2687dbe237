/**
 * Building a JavaScript function from source generated at mapping compile time (condition/emit.ts,
 * rules/program.ts): compile once, run many. A mapping's rules become one straight-line function
 * with its names, literals and operators written into the code, which V8 optimizes as a whole;
 * the interpreters beside them (condition/match.ts, rules/evaluate.ts) stay the reference, the
 * fallback for what the generated code hands back, and the path taken where code generation from
 * strings is turned off (`node --disallow-code-generation-from-strings`).
 *
 * What may enter generated source is narrow on purpose: names made here, numbers that are finite,
 * booleans, null and strings through JSON.stringify (a JSON string is a JavaScript string literal).
 * Everything else a generated function needs (tables, compiled nodes, helper functions) is bound:
 * passed in as an argument of the factory, named by `bind`, never spelled into the source.
 */

export class CodeUnit {
  private readonly names: string[] = [];
  private readonly values: unknown[] = [];
  private readonly byValue = new Map<unknown, string>();

  /** A name under which the generated code reads `value` (the same name for the same value). */
  bind(prefix: string, value: unknown): string {
    let name = this.byValue.get(value);
    if (name === undefined) {
      name = `${prefix}${this.names.length}`;
      this.names.push(name);
      this.values.push(value);
      this.byValue.set(value, name);
    }
    return name;
  }

  /**
   * Runs `body` (which returns the function) with the bound values, or returns null when this
   * process refuses code generation from strings (EvalError): the caller keeps its interpreter.
   */
  build<F>(body: string): F | null {
    let factory: (...values: unknown[]) => F;
    try {
      // The only place source is turned into code; see the module comment for what it may contain.
      // eslint-disable-next-line @typescript-eslint/no-implied-eval
      factory = new Function(...this.names, `'use strict';\n${body}`) as (...values: unknown[]) => F;
    } catch (err) {
      if (err instanceof EvalError) return null;
      throw err;
    }
    return factory(...this.values);
  }
}

/**
 * A literal scalar as JavaScript source. A number's String() reads back as the same number (-0 as 0,
 * which `===`, `<` and the rest do not tell apart); in parentheses so that a sign never joins an
 * operator before it.
 */
export function scalarSource(value: string | number | boolean | null): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number') return `(${String(value)})`;
  return String(value);
}
