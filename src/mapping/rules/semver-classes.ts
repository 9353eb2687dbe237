/**
 * The two classes of semver the mapping compiler uses (its range parser and its version), loaded
 * from their own files: the package's index loads every function and range helper it has.
 *
 * They are required, not imported: an import of a CommonJS file has Node scan the file's source for
 * the names it exports, and scanning these long class files sends that scanner through V8's
 * optimizing compiler in every thread that loads the mapping compiler.
 */
import { createRequire } from 'node:module';
import type RangeClass from 'semver/classes/range.js';
import type SemVerClass from 'semver/classes/semver.js';

const require = createRequire(import.meta.url);

export type { default as Comparator } from 'semver/classes/comparator.js';
export type Range = RangeClass;
export const Range = require('semver/classes/range.js') as typeof RangeClass;
export const SemVer = require('semver/classes/semver.js') as typeof SemVerClass;
