/**
 * Reading a member of p by name, for the condition matchers (match.ts). HOT PATH.
 *
 * A keyed read `o[name]` at one place in the code, fed a different name by each field, is
 * megamorphic in V8: every read goes through the stub cache. A read site that
 * only ever sees one name (and the few object shapes that hold it) compiles to a name check, a map
 * check and a field load. So each attribute name gets its own site: the first READ_SITES distinct
 * names a thread compiles each get a `case` below (a switch, not an array of functions: every case's
 * read keeps its own feedback, and the switch is one jump); later names share the generic site.
 * bench/micro/mapping.ts ("member reads") has the two side by side.
 *
 * Sites are handed out per thread and never taken back: names of mappings compiled early keep
 * theirs, which costs a later name nothing but the generic read.
 */

/** Distinct attribute names with a read site of their own, per thread. */
export const READ_SITES = 16;
/** The site of every name past READ_SITES. */
export const GENERIC_SITE = READ_SITES;

const sites = new Map<string, number>();

/** The read site of an attribute name (a path segment), assigned on first sight. */
export function readSiteOf(name: string): number {
  let site = sites.get(name);
  if (site === undefined) {
    site = sites.size < READ_SITES ? sites.size : GENERIC_SITE;
    if (site !== GENERIC_SITE) sites.set(name, site);
  }
  return site;
}

/** `o[name]`, read at `site` (readSiteOf(name)). Every case is the same read on purpose: see above. */
export function readMember(o: Record<string, unknown>, name: string, site: number): unknown {
  switch (site) {
    case 0:
      return o[name];
    case 1:
      return o[name];
    case 2:
      return o[name];
    case 3:
      return o[name];
    case 4:
      return o[name];
    case 5:
      return o[name];
    case 6:
      return o[name];
    case 7:
      return o[name];
    case 8:
      return o[name];
    case 9:
      return o[name];
    case 10:
      return o[name];
    case 11:
      return o[name];
    case 12:
      return o[name];
    case 13:
      return o[name];
    case 14:
      return o[name];
    case 15:
      return o[name];
    default:
      return o[name];
  }
}
