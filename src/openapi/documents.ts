/**
 * The OpenAPI 3.1 documents of the delivery API and the admin API, generated from the zod schemas
 * of schemas.ts (JSON Schema 2020-12, which OpenAPI 3.1 uses as is). Built once, on first use, as
 * ready JSON text: the admin listener serves them at /openapi/delivery.json and /openapi/admin.json.
 */
import { z } from 'zod';
import { registry } from './schemas.js';
import type { Json } from './operation.js';
import { deliveryDocument } from './delivery-document.js';
import { adminDocument } from './admin-document.js';

/** The component schemas of every named zod schema, without the per-schema $schema/$id. */
function componentSchemas(): Record<string, Json> {
  const { schemas } = z.toJSONSchema(registry, { uri: (id) => `#/components/schemas/${id}`, unrepresentable: 'any', io: 'input' }) as { schemas: Record<string, Json> };
  const out: Record<string, Json> = {};
  for (const [name, schema] of Object.entries(schemas)) {
    const rest = { ...schema };
    delete rest.$schema;
    delete rest.$id;
    out[name] = rest;
  }
  return out;
}

export interface OpenApiDocuments {
  readonly delivery: Json;
  readonly admin: Json;
}

let built: OpenApiDocuments | null = null;

/** Both documents (built on first use). */
export function openApiDocuments(): OpenApiDocuments {
  if (built === null) {
    const schemas = componentSchemas();
    built = { delivery: deliveryDocument(schemas), admin: adminDocument(schemas) };
  }
  return built;
}
