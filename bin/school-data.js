#!/usr/bin/env node
// Entry of the `school-data` command; runs the compiled CLI (built by `npm install` / `npm run build`).
import { main } from '../dist/cli/index.js'

process.exitCode = await main(process.argv)
