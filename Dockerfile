# The Weft image: one image, two processes (WEFT_PROCESS=api or worker) in docker-compose.yml.
FROM node:20-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
# Exactly the lockfile's versions, as scripts/setup.sh installs them.
RUN npm ci --no-audit --no-fund
COPY . .
RUN node_modules/.bin/tsx workers/bundle.ts
ENV NODE_ENV=production HOST=0.0.0.0 PORT=8080
EXPOSE 8080
CMD ["node_modules/.bin/tsx", "main.ts"]
