#!/bin/bash
# 36 streaming chat requests: three shared system prompts (prefix reuse), distinct user turns.
SYS=("You are a careful assistant for a logistics company. Answer questions about shipments, customs forms, warehouse schedules and delivery windows. Always state the assumptions you make and keep answers short. Refuse to guess tracking numbers."
"You are a code reviewer for a Go repository. Point out bugs, data races, missing error handling and unclear names. Quote the line you are talking about and propose a concrete fix. Prefer small changes over rewrites and explain why each change matters."
"You are a travel planner. Given a city and a budget, suggest an itinerary with morning, afternoon and evening activities, local food, and how to move between places by public transport. Mention opening hours when they matter.")
for i in $(seq 0 35); do
  s=${SYS[$((i % 3))]}
  u="Question number $i: please give me $((i % 5 + 1)) ideas about topic $((i * 7 % 11)) and explain each briefly."
  mt=$((8 + (i * 13) % 48))
  curl -sN localhost:31999/v1/chat/completions -H 'Content-Type: application/json' \
    -d "{\"model\":\"tiny-llama\",\"stream\":true,\"max_tokens\":$mt,\"messages\":[{\"role\":\"system\",\"content\":\"$s\"},{\"role\":\"user\",\"content\":\"$u\"}]}" > /dev/null &
  sleep 0.$((RANDOM % 4 + 1))
done
wait
