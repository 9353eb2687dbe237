/**
 * The demo environment seeded into an empty store on first start, so `npm start` answers a pasted
 * curl line at once. The key is random per installation and printed once, at the start that creates
 * it; a file store keeps it in the data directory (mode 0600) and later starts name that file
 * instead (keys are never logged otherwise). A memory store writes no file: its demo environment,
 * key included, ends with the process. The key only reads demo content.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeDirectories } from './directories.js';

export const DEMO_ENV = 'demo';
export const DEMO_CONTENT_ID = 'PlayerSettings';

const PLAYER_SETTINGS = `{
  // Seeded by rcd on first start. Comments like this one are stripped before delivery.
  "difficulty": "normal",
  "dailyReward": { "coins": 100, "gems": 1 },
  "features": { "newShop": false, "chat": true },
  /* Shown on the title screen */
  "motd": "Welcome, // this is not a comment, it is inside a string"
}
`;

const STORE_LAYOUT = `{
  "tabs": ["featured", "gems", "bundles"],
  "featuredItem": "starter-pack",
  "discountPercent": 0
}
`;

/** A segment on a user attribute and a sticky A/B test, so the first curl shows `meta.seg` at work. */
const PLAYER_SETTINGS_MAPPING = {
  rules: [
    { segment: 'veterans', when: { level: { $gte: 10 } }, patch: { difficulty: 'hard' } },
    {
      segment: 'reward-test',
      info: 'daily reward experiment',
      variants: [
        { name: 'control', mod: [0, 499], patch: { dailyReward: { coins: 100 } } },
        { name: 'boosted', mod: [500, 999], patch: { dailyReward: { coins: 150 } }, info: 'coins +50%' },
      ],
    },
  ],
};

export function demoBundle(key: string): unknown {
  return {
    environments: {
      [DEMO_ENV]: {
        keys: [key],
        content: {
          [DEMO_CONTENT_ID]: { text: PLAYER_SETTINGS, mapping: PLAYER_SETTINGS_MAPPING },
          StoreLayout: { text: STORE_LAYOUT },
        },
      },
    },
  };
}

export function demoKeyPath(dataDir: string): string {
  return join(dataDir, 'demo-api-key');
}

export function newDemoKey(): string {
  return 'demo_' + randomBytes(18).toString('base64url');
}

/** Keeps the key beside the admin token so later starts can say where it is; returns the file. */
export function writeDemoKey(dataDir: string, key: string): string {
  makeDirectories(dataDir, 0o700);
  const path = demoKeyPath(dataDir);
  writeFileSync(path, key + '\n', { mode: 0o600 });
  chmodSync(path, 0o600);
  return path;
}
