// The mapping engine's view of app versions: the project-wide definition (src/version.ts).
export { compareAppVersions, parseAppVersion } from '../version.js';
