/** The JSON error shape every wakegate surface shares (the CLI prints the same): `{ error: { code, message, issues? } }`. */
export interface ErrorBody {
  error: { code: string; message: string; issues?: { path: string; message: string }[] };
}

export const errorBody = (code: string, message: string, issues?: { path: string; message: string }[]): ErrorBody => ({
  error: { code, message, ...(issues && issues.length ? { issues } : {}) },
});
