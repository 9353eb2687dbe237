// The exposure writer's recognition of postgres.js's write after its connection closed
// (src/exposures/write-after-close.ts), with the driver file paths this checkout really loads.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isWriteAfterClose } from '../../../src/exposures/write-after-close.js';

const require = createRequire(import.meta.url);

function thrownFrom(connectionFile: string, message = "Cannot read properties of undefined (reading 'write')"): TypeError {
  const err = new TypeError(message);
  err.stack = `TypeError: ${message}\n    at nextWrite (${connectionFile}:250:14)\n    at process.processImmediate (node:internal/timers:478:21)`;
  return err;
}

describe('isWriteAfterClose', () => {
  it("recognises it thrown from the driver build the store's connect() requires (CommonJS)", () => {
    const build = dirname(require.resolve('postgres'));
    expect(build).toMatch(/cjs[/\\]src$/);
    expect(isWriteAfterClose(thrownFrom(join(build, 'connection.js')))).toBe(true);
  });

  it('recognises it thrown from the ES module build', () => {
    const root = join(dirname(require.resolve('postgres')), '..', '..');
    expect(isWriteAfterClose(thrownFrom(join(root, 'src', 'connection.js')))).toBe(true);
  });

  it('refuses any other error', () => {
    const file = join(dirname(require.resolve('postgres')), 'connection.js');
    expect(isWriteAfterClose(thrownFrom(file, "Cannot read properties of undefined (reading 'end')"))).toBe(false);
    expect(isWriteAfterClose(thrownFrom('/app/node_modules/other/src/connection.js'))).toBe(false);
    const notType = new Error("Cannot read properties of undefined (reading 'write')");
    notType.stack = thrownFrom(file).stack!;
    expect(isWriteAfterClose(notType)).toBe(false);
  });
});
