// One error class carrying PostgreSQL's ErrorResponse fields, used on both sides
// of the worker boundary. Field letters: PostgreSQL docs, "Error and Notice
// Message Fields".

export interface PgErrorFields {
  severity?: string
  code: string
  message: string
  detail?: string
  hint?: string
  position?: string
  where?: string
  schema?: string
  table?: string
  column?: string
  constraint?: string
}

/** The optional fields, copied in and out by name. */
const OPTIONAL_FIELDS = ['detail', 'hint', 'position', 'where', 'schema', 'table', 'column', 'constraint'] as const

/**
 * Each field's letter in ErrorResponse and NoticeResponse, in the order
 * PostgreSQL writes them (S, then V with the same severity, first). The one
 * table the serializer (./backend.ts) and the parser (./backend-decode.ts) use.
 */
export const ERROR_FIELD_CODES: readonly (readonly [string, keyof PgErrorFields])[] = [
  ['S', 'severity'],
  ['C', 'code'],
  ['M', 'message'],
  ['D', 'detail'],
  ['H', 'hint'],
  ['P', 'position'],
  ['W', 'where'],
  ['s', 'schema'],
  ['t', 'table'],
  ['c', 'column'],
  ['n', 'constraint'],
]

// The optional fields are declared once, in PgErrorFields, and merged into
// the class (they are set by name in the constructor).
export interface PgError extends Omit<PgErrorFields, 'severity' | 'code' | 'message'> {}

export class PgError extends Error {
  severity: string
  code: string

  constructor(fields: PgErrorFields) {
    super(fields.message)
    this.name = 'PgError'
    this.severity = fields.severity ?? 'ERROR'
    this.code = fields.code
    for (const k of OPTIONAL_FIELDS) {
      if (fields[k] !== undefined) this[k] = fields[k]
    }
  }

  toFields(): PgErrorFields {
    const f: PgErrorFields = { severity: this.severity, code: this.code, message: this.message }
    for (const k of OPTIONAL_FIELDS) {
      if (this[k] !== undefined) f[k] = this[k]
    }
    return f
  }
}

/** SQLSTATE codes the engine raises itself. */
export const SqlState = {
  syntaxError: '42601',
  undefinedObject: '42704',
  duplicateObject: '42710',
  featureNotSupported: '0A000',
  invalidParameterValue: '22023',
  objectInUse: '55006',
  objectNotInPrerequisiteState: '55000',
  protocolViolation: '08P01',
  internalError: 'XX000',
} as const

/** Normalize anything thrown (PGlite's DatabaseError included) to a PgError. */
export function toPgError(e: unknown): PgError {
  if (e instanceof PgError) return e
  if (e && typeof e === 'object' && 'code' in e && typeof (e as { code: unknown }).code === 'string') {
    const d = e as Partial<PgErrorFields> & { message?: string }
    return new PgError({ ...d, code: d.code!, message: d.message ?? 'error', severity: d.severity })
  }
  return new PgError({ code: SqlState.internalError, message: e instanceof Error ? e.message : String(e) })
}
