// Run-time parameters (GUCs) checked and shown without the backend.
//
// A session that must not wait for the shared backend (a walsender, or a
// transaction block that has not yet needed the backend) still answers SET,
// RESET and SHOW as PostgreSQL does. The catalog is pg_settings as read when
// the engine opened; values are checked and converted like guc.c does
// (parse_int/parse_real with units, parse_bool, enums) and kept in the base
// unit, the form set_config() takes when the session next uses the backend.
// Spec: PostgreSQL docs, "Setting Parameters" (numeric units) and "SET".

import { PgError } from '../../protocol/errors'

export interface GucDef {
  name: string
  vartype: 'bool' | 'integer' | 'real' | 'enum' | 'string'
  unit: string | null
  min: number | null
  max: number | null
  enumvals: string[] | null
  context: string
  /** The value when the engine opened (base unit), what RESET returns to. */
  boot: string
}

type UnitKind = 'memory' | 'time'
/** Each unit in bytes or microseconds. */
const MEMORY: Record<string, number> = { B: 1, kB: 1024, MB: 1024 ** 2, GB: 1024 ** 3, TB: 1024 ** 4 }
const TIME: Record<string, number> = { us: 1, ms: 1000, s: 1e6, min: 60e6, h: 3600e6, d: 86400e6 }
const BASE: Record<string, [UnitKind, number]> = {
  B: ['memory', 1],
  kB: ['memory', 1024],
  '8kB': ['memory', 8192],
  MB: ['memory', 1024 ** 2],
  ms: ['time', 1000],
  s: ['time', 1e6],
  min: ['time', 60e6],
}
/** Units SHOW may print, largest first (PostgreSQL's memory_units_map / time_units_map order). */
const SHOW_MEMORY = ['TB', 'GB', 'MB', 'kB', 'B']
const SHOW_TIME = ['d', 'h', 'min', 's', 'ms', 'us']

const BOOL_WORDS: [string, boolean][] = [
  ['true', true],
  ['false', false],
  ['yes', true],
  ['no', false],
  ['on', true],
  ['off', false],
  ['1', true],
  ['0', false],
]

function invalidValue(name: string, value: string, hint?: string): PgError {
  return new PgError({ code: '22023', message: `invalid value for parameter "${name}": "${value}"`, hint })
}

/** PostgreSQL's parse_bool: the words above, any unique prefix, any case. */
export function parseBool(value: string): boolean | null {
  const v = value.trim().toLowerCase()
  if (v === '') return null
  const hits = BOOL_WORDS.filter(([w]) => w.startsWith(v))
  // "o" is ambiguous (on/off); "1"/"0" must match whole.
  if (hits.length === 0 || (v.length === 1 && v === 'o')) return null
  const values = new Set(hits.map(([, b]) => b))
  return values.size === 1 ? hits[0][1] : null
}

export class GucCatalog {
  private readonly defs = new Map<string, GucDef>()

  constructor(defs: GucDef[]) {
    for (const d of defs) this.defs.set(d.name.toLowerCase(), d)
  }

  /** From pg_settings rows: name, setting, unit, vartype, min_val, max_val, enumvals (text), context. */
  static fromRows(rows: (string | null)[][]): GucCatalog {
    return new GucCatalog(
      rows.map(([name, setting, unit, vartype, min, max, enumvals, context]) => ({
        name: name!,
        boot: setting ?? '',
        unit,
        vartype: vartype as GucDef['vartype'],
        min: min === null ? null : Number(min),
        max: max === null ? null : Number(max),
        enumvals: enumvals === null ? null : enumvals.replace(/^\{|\}$/g, '').split(',').map((s) => s.replace(/^"|"$/g, '')),
        context: context!,
      })),
    )
  }

  /** SQL that reads what fromRows takes. */
  static readonly SQL = `SELECT name, setting, unit, vartype, min_val, max_val, enumvals::text, context FROM pg_catalog.pg_settings`

  get(name: string): GucDef | undefined {
    return this.defs.get(name.toLowerCase())
  }

  /**
   * The value SET name = value stores (base unit), or PostgreSQL's error.
   * A name with a dot is a custom placeholder: any string, as PostgreSQL allows.
   */
  assign(name: string, value: string): { name: string; value: string } {
    const def = this.get(name)
    if (!def) {
      if (name.includes('.')) return { name: name.toLowerCase(), value }
      throw new PgError({ code: '42704', message: `unrecognized configuration parameter "${name}"` })
    }
    switch (def.context) {
      case 'internal':
        throw new PgError({ code: '55P02', message: `parameter "${def.name}" cannot be changed` })
      case 'postmaster':
        throw new PgError({ code: '55P02', message: `parameter "${def.name}" cannot be changed without restarting the server` })
      case 'sighup':
        throw new PgError({ code: '55P02', message: `parameter "${def.name}" cannot be changed now` })
      case 'backend':
      case 'superuser-backend':
        throw new PgError({ code: '55P02', message: `parameter "${def.name}" cannot be set after connection start` })
    }
    return { name: def.name, value: this.check(def, value) }
  }

  private check(def: GucDef, value: string): string {
    switch (def.vartype) {
      case 'bool': {
        const b = parseBool(value)
        if (b === null) throw new PgError({ code: '22023', message: `parameter "${def.name}" requires a Boolean value` })
        return b ? 'on' : 'off'
      }
      case 'enum': {
        const v = value.trim().toLowerCase()
        const hit = def.enumvals?.find((e) => e.toLowerCase() === v)
        if (hit === undefined) throw invalidValue(def.name, value, `Available values: ${def.enumvals?.join(', ')}.`)
        return hit
      }
      case 'integer':
      case 'real': {
        const n = parseNumber(def, value)
        if (n === null) {
          const kind = def.unit ? BASE[def.unit]?.[0] : undefined
          throw invalidValue(
            def.name,
            value,
            kind === 'time'
              ? 'Valid units for this parameter are "us", "ms", "s", "min", "h", and "d".'
              : kind === 'memory'
                ? 'Valid units for this parameter are "B", "kB", "MB", "GB", and "TB".'
                : undefined,
          )
        }
        const v = def.vartype === 'integer' ? Math.round(n) : n
        if ((def.min !== null && v < def.min) || (def.max !== null && v > def.max)) {
          const u = def.unit ? ` ${def.unit}` : ''
          throw new PgError({
            code: '22023',
            message: `${v}${u} is outside the valid range for parameter "${def.name}" (${def.min}${u} .. ${def.max}${u})`,
          })
        }
        return String(v)
      }
      default:
        return value
    }
  }

  /** SHOW's text for a stored value: numbers in the largest unit that divides them, as PostgreSQL prints them. */
  show(name: string, value: string): string {
    const def = this.get(name)
    if (!def || !def.unit || (def.vartype !== 'integer' && def.vartype !== 'real')) return value
    const base = BASE[def.unit]
    const n = Number(value)
    if (!base || !Number.isFinite(n)) return value
    if (n === 0 || n === -1) return String(n)
    const [kind, factor] = base
    const amount = n * factor
    const table = kind === 'memory' ? MEMORY : TIME
    for (const u of kind === 'memory' ? SHOW_MEMORY : SHOW_TIME) {
      // The largest unit that divides the value (never below the base unit:
      // the base unit itself always divides).
      if (def.vartype === 'real' ? u === def.unit : amount % table[u] === 0) return `${amount / table[u]}${u}`
    }
    return `${n}${def.unit}`
  }

  /** A setting in milliseconds (a time GUC's stored value), 0 when unset or unknown. */
  /** A memory setting's value (base unit, e.g. kB) in bytes; 0 when it is not one. */
  static bytes(def: GucDef | undefined, value: string | undefined): number {
    if (!def || value === undefined) return 0
    const base = def.unit ? BASE[def.unit] : undefined
    const n = Number(value)
    return base && base[0] === 'memory' && Number.isFinite(n) ? n * base[1] : 0
  }

  static millis(def: GucDef | undefined, value: string | undefined): number {
    if (!def || value === undefined) return 0
    const base = def.unit ? BASE[def.unit] : undefined
    const n = Number(value)
    if (!Number.isFinite(n)) return 0
    return base && base[0] === 'time' ? (n * base[1]) / 1000 : n
  }
}

/** parse_int / parse_real: a number, optional spaces, an optional unit, in the parameter's base unit. */
function parseNumber(def: GucDef, raw: string): number | null {
  const m = /^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|0[xX][0-9a-fA-F]+)\s*([A-Za-z]*)\s*$/.exec(raw)
  if (!m) return null
  const n = m[1].startsWith('0x') || m[1].startsWith('0X') ? parseInt(m[1], 16) : Number(m[1])
  if (!Number.isFinite(n)) return null
  if (m[2] === '') return n
  const base = def.unit ? BASE[def.unit] : undefined
  if (!base) return null
  const [kind, factor] = base
  const mult = (kind === 'memory' ? MEMORY : TIME)[m[2]]
  if (mult === undefined) return null
  return (n * mult) / factor
}
