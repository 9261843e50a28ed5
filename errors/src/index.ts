export { hasErrorMarker, PaiErrorBase, type PaiErrorJson, type PaiErrorOptions } from "./pai-error-base.ts";
