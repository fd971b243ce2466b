// The server side of Zero's custom mutators, run in the page on a tabgres
// database: what `zeroPostgresJS(schema, sql)` is on a Node server, with an
// interactive tabgres transaction (`Database.transaction`) in place of a
// postgres.js one. Mutators get it as `tx.dbTransaction.wrappedTransaction`.

import { executePostgresQuery, ZQLDatabase, type DBConnection, type DBTransaction } from '@rocicorp/zero/server'
import type { Database, Queryable } from '../../client/index'

type Schema = ConstructorParameters<typeof ZQLDatabase>[1]
type Args = Parameters<DBTransaction<Queryable>['runQuery']>

class TabgresTransaction implements DBTransaction<Queryable> {
  constructor(readonly wrappedTransaction: Queryable) {}

  async query(sql: string, args: unknown[]): Promise<Iterable<Record<string, unknown>>> {
    return (await this.wrappedTransaction.query(sql, args)).rows
  }

  runQuery<R>(...[ast, format, schema, serverSchema]: Args): Promise<R> {
    return executePostgresQuery(this, ast, format, schema, serverSchema) as Promise<R>
  }
}

class TabgresConnection implements DBConnection<Queryable> {
  constructor(private readonly db: Database) {}

  transaction<T>(fn: (tx: DBTransaction<Queryable>) => Promise<T>): Promise<T> {
    return this.db.transaction((tx) => fn(new TabgresTransaction(tx)))
  }
}

/** A Zero database for `PushProcessor` (custom mutators) on a tabgres database: each push runs in one transaction. */
export function zeroTabgres<S extends Schema>(schema: S, db: Database): ZQLDatabase<S, Queryable> {
  return new ZQLDatabase(new TabgresConnection(db), schema)
}
