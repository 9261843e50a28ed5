// `npm start`: the PAI chat app. Builds the page when needed, then serves it and PAI's HTTP API on 127.0.0.1.
//   PORT=3000 npm start          pick the port (default: any free one, printed)
//   OPENAI_API_KEY=... npm start  a real model (also ANTHROPIC_API_KEY, PAI_MODEL_BASE_URL + PAI_MODEL)
import { createChatServer } from "./server/create-chat-server.ts";

const log = (line: string) => console.log(`· ${line}`);
const server = await createChatServer({
  port: Number(process.env.PORT ?? 0),
  ...(process.env.PAI_CHAT_DB ? { dbPath: process.env.PAI_CHAT_DB } : {}),
  ...(process.env.PAI_CHAT_POOL_ID ? { poolId: process.env.PAI_CHAT_POOL_ID } : {}),
  log,
});
log(`model: ${server.model.description}`);
console.log(`PAI chat on ${server.url}`);

let stopping = false;
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    if (stopping) process.exit(1);
    stopping = true;
    log("stopping: removing sandboxes");
    void server.close().finally(() => process.exit(0));
  });
}
