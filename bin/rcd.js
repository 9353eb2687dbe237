#!/usr/bin/env node
// Thin launcher so `rcd` works from a checkout and from an installed package; the CLI itself is compiled TypeScript.
import '../dist/src/cli.js';
